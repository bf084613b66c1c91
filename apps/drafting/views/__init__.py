"""Browser pages of drafting, by sub-domain: `drafts` (the Drafts tab, a new draft, the draft
page), `versions` (a version with its findings, verifying, overrides, approval, exports, diffs)
and `runs` (the Runs tab, a new run, the run page and a lawyer's decisions on it).

Every page reads through the `_for_user` selectors of apps.drafting and apps.verification
(membership checked, read audited) and every change goes through their services; a draft or
run the user cannot see is the same 404 as a missing one. Forms work without JavaScript."""
