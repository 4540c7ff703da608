"""The release inputs, as data: options and ini resolved (``settings``), the contract profile, the pinned
counts (``expectations``), the catalog layouts (``catalog/``) and the D1 §9 datasets (``datasets/``).

May import core only (and fake_mcp's scenario types for the datasets); nothing that runs or judges.
"""
