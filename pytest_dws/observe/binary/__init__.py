"""Shared machinery of the gates that drive the binary about itself (SCH, SCHCLI, ALI, FIN): the binary's own
catalog and the tools each gate judges (:mod:`.views`), cobra help text (:mod:`.helptext`), synthetic argv
(:mod:`.argv`), the fake worlds the calls run in (:mod:`.worlds`, :mod:`.examples`). No gate lives here.
"""
