"""Code snapshots: what a submit ships (collect), where it is kept (store), what the dry run says (preview),
what ``orch clean`` removes (clean)."""
