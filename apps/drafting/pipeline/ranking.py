"""Which frozen pages of a packet matter most to a stage: PostgreSQL full text search.

`frozen_pages_ranked(packet_id=..., query=...)` (a selector: it only reads, and the stage that
calls it has already been checked against its case) ranks the packet's frozen pages against the
query (the run's instructions and the section being worked on) with `ts_rank_cd` over an
OR-query built by `websearch_to_tsquery` (any of the query's words counts; a page with more of
them, closer together, ranks higher; normalisation 1 divides by 1 + log(page length), so a
long page does not win by length alone).

The text vector of a frozen page is the one the documents app stored (and GIN-indexed) for the
page it was frozen from, when that page's text is still exactly the frozen text; otherwise it
is computed from the frozen text itself, at most MAX_VECTOR_CHARS of it (a tsvector is capped
at 1 MB, and this keeps the cost of a huge page bounded). Frozen pages are never written to.

The query is reduced to its first MAX_QUERY_WORDS distinct words (letters and digits only, so
nothing in it is websearch syntax); `query_text` puts the instructions' words first.
"""

import re
from dataclasses import dataclass

from django.db import connection

from apps.documents.models import Page
from apps.evidence.models import FrozenPage

SEARCH_CONFIG = "english"
MAX_QUERY_WORDS = 200
MAX_VECTOR_CHARS = 100_000
# websearch_to_tsquery's operators, dropped as words so that they stay words.
_OPERATORS = {"or", "and", "not"}
_WORD = re.compile(r"[^\W_]{2,}")


@dataclass(frozen=True)
class Ranked:
    page_id: int
    rank: float


def query_words(text: str, *, limit: int = MAX_QUERY_WORDS) -> list[str]:
    """The distinct words of `text`, in order, at most `limit`."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group().lower()
        if word not in _OPERATORS and len(word) <= 100:
            seen.setdefault(word, None)
            if len(seen) >= limit:
                break
    return list(seen)


def query_text(instructions: str, section: str) -> str:
    """The query for a stage: the instructions' words first (at most 3/5 of MAX_QUERY_WORDS),
    then the section's, as one line of words."""
    words = query_words(instructions, limit=MAX_QUERY_WORDS * 3 // 5)
    for word in query_words(section):
        if len(words) >= MAX_QUERY_WORDS:
            break
        if word not in words:
            words.append(word)
    return " ".join(words)


_RANK_SQL = """
WITH q AS (SELECT websearch_to_tsquery(%(config)s::regconfig, %(query)s) AS query),
v AS MATERIALIZED (
    SELECT fp.id, fp.position,
           CASE WHEN dp.search_vector IS NOT NULL AND dp.text = fp.text THEN dp.search_vector
                ELSE to_tsvector(%(config)s::regconfig, left(fp.text, %(max_chars)s))
           END AS vector
      FROM {frozen} fp
      LEFT JOIN {page} dp ON dp.document_id = fp.document_id AND dp.number = fp.page_number
     WHERE fp.packet_id = %(packet)s
)
SELECT v.id, ts_rank_cd(v.vector, q.query, 1) AS rank
  FROM v, q
 WHERE v.vector @@ q.query
 ORDER BY rank DESC, v.position
"""


def frozen_pages_ranked(*, packet_id: int, query: str) -> list[Ranked]:
    """The packet's frozen pages that match any word of `query`, best first (ties in packet
    order). Pages that match nothing are left out; an empty query matches nothing."""
    words = query_words(query)
    if not words:
        return []
    sql = _RANK_SQL.format(frozen=FrozenPage._meta.db_table, page=Page._meta.db_table)
    params: dict[str, str | int] = {
        "config": SEARCH_CONFIG,
        "query": " or ".join(words),
        "max_chars": MAX_VECTOR_CHARS,
        "packet": packet_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Ranked(page_id=row[0], rank=float(row[1])) for row in cursor.fetchall()]
