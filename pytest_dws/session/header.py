"""The run's first lines (pytest's report header): what is judged, which option would judge more, and how the
implementation is kept on the machine. Printed before anything runs, so a person knows at once what the verdict
will cover; the closing block (:mod:`pytest_dws.session.summary`) says the rest at the end."""

from __future__ import annotations

from pytest_dws.core.identity import target_digest
from pytest_dws.inputs.catalog.layout import detect
from pytest_dws.inputs.settings import Settings
from pytest_dws.launch.contain.sandbox import Isolation


def header_lines(settings: Settings, isolation: Isolation) -> list[str]:
    s = settings
    parts = []
    if s.replay is not None:
        parts.append(f"recording {s.replay}")
    elif s.cli:
        parts.append(f"cli {' '.join(s.cli)} (build {target_digest(s.cli)[:12]})")
    if s.source is not None:
        parts.append(f"source {s.source}")
    if s.catalog is not None:
        parts.append(f"catalog {s.catalog}")
    lines = [f"dws-contract: target ({s.origin}): " + ("; ".join(parts) or "(none)")]
    if s.from_recording:  # issue 37 (1): which options the replay took back from the recording
        lines.append("dws-contract: from the recording: " + "; ".join(s.from_recording.values()))
    if s.source is not None and s.catalog is None and detect(s.source) is None:
        lines.append("dws-contract: catalog: " + ("from the binary (`dws schema --all`): the tree commits none, it "
                                                  "assembles its catalog at build time" if s.cli or s.replay else
                                                  "none: the tree assembles it at build time; --dws-cli would "
                                                  "judge the one its binary embeds"))
    missing = []
    if not s.cli and s.replay is None:
        missing.append("--dws-cli (the binary's gates)")
    if s.source is None:
        missing.append("--dws-source (source tree, skills, regeneration)")
    if s.expect is None:
        missing.append("--dws-expect (pinned counts)")
    if missing:
        lines.append("dws-contract: not judged without " + ", ".join(missing))
    if s.strict:
        lines.append("dws-contract: strict readings (--dws-strict): " + ", ".join(sorted(s.strict)))
    ran = s.cli and s.replay is None
    lines.append(isolation.line if isolation.mode != "namespace" or not ran
                 else "dws-contract: isolation: network namespace (only loopback exists for the implementation)")
    if ran:
        lines.append(isolation.files_line)
    return [line for line in lines if line]
