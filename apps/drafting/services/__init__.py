"""Drafting's writes, one home per kind (issue 23 req 2): `drafts` (drafts and their versions),
`approval` (approving a version; the refusals an export shares), `exports` (DOCX and PDF),
`transactions` (a financial extraction's table and its CSV), `runs` (starting, cancelling and
deciding on runs, queueing stages), `events` (the one writer of run events) and `token_events`
(a worker's group commit of streamed token batches, through `events`)."""
