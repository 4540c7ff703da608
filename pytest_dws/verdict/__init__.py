"""What a run concludes: one recorded outcome classified (``outcome``), a gate's subjects folded against the
baseline (``fold``), named cases and their attribution to rule gates, the D1 §9.5 metrics.

May import inputs and core; never the session, the gates or the launcher.
"""
