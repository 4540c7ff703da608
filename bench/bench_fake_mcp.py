"""Throughput and latency of fake_mcp against the floor of a trivial stdlib HTTP server (run by hand).

    python bench/bench_fake_mcp.py [--calls 3000] [--rounds 6] [--tool search_groups]

Each server runs in its own process (as with a real ``dws`` binary, the client is another process);
the client is one keep-alive ``http.client`` connection on loopback sending the exact WIRE.md §2 request.
The floor server is the simplest possible ``BaseHTTPRequestHandler`` (HTTP/1.1 keep-alive, no logging)
returning a fixed body: the very bytes fake_mcp returns for the same call, so only processing differs.
Rounds alternate floor/fake to spread machine noise; figures pool every call of every round.
Targets (issue 3): >= 2,000 calls/s and p50 <= 1.5 x the floor's p50.  Exit status 1 if missed.
"""

from __future__ import annotations

import argparse
import http.client
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_mcp import WIRE_HEADERS, FakeMCPServer, Scenario, tools_call_body

TARGET_CPS = 2000.0
TARGET_RATIO = 1.5

REQUESTS = {
    "search_groups": ("im", {"cursor": "0", "keyword": "项目群 07", "limit": 10}),
    "get_group_members": ("chat", {"cursor": "0", "openconversation_id": "cidBENCH00000007"}),
    "list_all_conversations": ("im", {"limit": 100}),
}


def bench_scenario() -> Scenario:
    """20 groups of 5 members, a realistic size for one chat-shortcut gate."""
    b = Scenario.builder("bench")
    for i in range(20):
        members = [{"name": f"成员{i}-{j}", "openDingtalkId": f"odid-{i}-{j}", "userId": f"u{i}{j}"}
                   for j in range(5)]
        b.group(f"cidBENCH{i:08d}", f"项目群 {i:02d}", owner=f"u{i}0", members=members,
                bots=[{"name": "bot", "robotCode": f"rc-{i}"}])
    return b.build()


def serve(kind: str, tool: str) -> None:
    """Child process: start one server, print its port, serve until stdin closes."""
    if kind == "fake":
        srv = FakeMCPServer(scenario=bench_scenario()).start()
        port = srv.port
    else:
        body = fixed_body(tool)

        class Floor(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Floor)
        httpd.daemon_threads = True
        import threading

        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        port = httpd.server_address[1]
    print(port, flush=True)
    sys.stdin.read()


def fixed_body(tool: str) -> bytes:
    """The bytes fake_mcp answers for the benchmark request (the floor returns them verbatim)."""
    product, args = REQUESTS[tool]
    with FakeMCPServer(scenario=bench_scenario()) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port)
        conn.request("POST", f"/mcp/{product}", tools_call_body(tool, args), WIRE_HEADERS)
        return conn.getresponse().read()


def measure(port: int, tool: str, calls: int, warmup: int = 200) -> list[int]:
    """Per-call latencies (ns) of ``calls`` sequential keep-alive calls after a short warm-up."""
    product, args = REQUESTS[tool]
    body, path = tools_call_body(tool, args), f"/mcp/{product}"
    conn = http.client.HTTPConnection("127.0.0.1", port)
    lat: list[int] = []
    clock = time.perf_counter_ns
    for i in range(warmup + calls):
        t0 = clock()
        conn.request("POST", path, body, WIRE_HEADERS)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise SystemExit(f"unexpected HTTP {resp.status}")
        if i >= warmup:
            lat.append(clock() - t0)
    conn.close()
    return lat


def summary(lat: list[int]) -> dict[str, float]:
    """calls/s (calls over summed latency) and p50/p99 in microseconds."""
    ordered = sorted(lat)
    return {"cps": len(lat) / (sum(lat) / 1e9), "p50": ordered[len(ordered) // 2] / 1e3,
            "p99": ordered[int(len(ordered) * 0.99)] / 1e3}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--tool", choices=sorted(REQUESTS), default="search_groups")
    ap.add_argument("--serve", choices=["floor", "fake"], help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.serve:
        serve(opts.serve, opts.tool)
        return 0

    procs, ports = {}, {}
    for kind in ("floor", "fake"):
        procs[kind] = subprocess.Popen([sys.executable, __file__, "--serve", kind, "--tool", opts.tool],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ports[kind] = int(procs[kind].stdout.readline())
    pooled: dict[str, list[int]] = {"floor": [], "fake": []}
    try:
        for n in range(opts.rounds):
            line = []
            for kind in ("floor", "fake"):
                lat = measure(ports[kind], opts.tool, opts.calls)
                pooled[kind] += lat
                s = summary(lat)
                line.append(f"{kind} {s['cps']:6.0f}/s p50 {s['p50']:6.1f}us")
            print(f"  round {n + 1}: " + "   ".join(line))
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait(10)

    med = {kind: summary(lat) for kind, lat in pooled.items()}
    print(f"tool={opts.tool} calls={opts.calls} x {opts.rounds} rounds (pooled) python={sys.version.split()[0]}")
    for kind in ("floor", "fake"):
        m = med[kind]
        print(f"  {kind:5s}  {m['cps']:8.0f} calls/s   p50 {m['p50']:7.1f} us   p99 {m['p99']:7.1f} us")
    ratio = med["fake"]["p50"] / med["floor"]["p50"]
    ok = med["fake"]["cps"] >= TARGET_CPS and ratio <= TARGET_RATIO
    print(f"  fake/floor p50 ratio {ratio:.2f} (target <= {TARGET_RATIO}); "
          f"calls/s target >= {TARGET_CPS:.0f}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
