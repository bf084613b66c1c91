"""Claims in a draft: record cites, case citations, dates, amounts and quotations, with offsets.

Pure functions, no Django. `extract_claims(text, bates_prefixes=...)` returns every checkable
claim of a draft with its character offsets (`text[claim.start:claim.end] == claim.text`) and
the offsets of its sentence. The order of work follows what can go wrong:

1. quotations first (their words are checked as a quotation, so nothing inside the marks is
   read as a record cite, date or amount of its own);
2. record cites (Bates numbers and ranges of the case's prefixes or of any PREFIX+digits label,
   "Ex. 3 at ACME000022", "Compl. ¶ 4", "Dkt. 12 at 3", "1 App. 24"), then whatever sits where a
   record cite belongs and is none ("RTX3060", "GPU 0001", "Draft v2", "the earlier summary");
3. case citations with eyecite, on the text with record cites and quotations blanked out (so
   "1 App. 24" is never a case), guarded (empty text, exceptions) and time-limited (the text goes
   to eyecite in bounded chunks while time remains; what is left after the limit is read by a
   plain reporter pattern and its citations are never resolved). eyecite is a candidate finder:
   an `Id.` whose nearest preceding cite is a record cite is not bound to a case unless the
   case is named again in between, and an unresolved short form, `Id.` or supra stays
   `resolved=False`;
4. dates and amounts outside all of the above.

A quotation of four or more words is a claim; a shorter quoted term only where a cite is given
for it (a record cite in its sentence, or an authority cited for it), and a defined term
(`("Northline")`, `(the "Agreement")`) never. Statutes that eyecite finds are not claims (the
claim kinds have none yet). `timeout_s` counts from the call: the work before eyecite is linear
in the text and eyecite gets what remains.

Modules: `base` (the claim types), `quotations`, `sentences`, `record` (record cites),
`references` (what is used as a record cite and is none), `cases` (eyecite), `values` (dates
and amounts), `extract` (the order of work above).
"""

from __future__ import annotations

from apps.verification.claims.base import BatesRef, CaseCite, Claim, Kind, Spans, StatuteCite
from apps.verification.claims.extract import extract_claims
from apps.verification.claims.record import DEFINITION, defined_terms
from apps.verification.claims.references import is_generated_reference
from apps.verification.claims.sentences import sentences

__all__ = [
    "DEFINITION",
    "BatesRef",
    "CaseCite",
    "Claim",
    "Kind",
    "Spans",
    "StatuteCite",
    "defined_terms",
    "extract_claims",
    "is_generated_reference",
    "sentences",
]
