"""A production's rows: the production, its items and its Bates index, numbered.

Two ways of numbering (Production.page_suffix_digits):
- 0: every page takes the next number (ABC000123, ABC000124, ...); an item runs from its first
  page's number to its last page's.
- N (1-6): every document takes the next number and its pages carry it with an N-digit suffix
  from 1 (ABC000123.001, ABC000123.002, ...); an item's first and last number are that one
  number, and its BEGBATES/ENDBATES are its first and last page's labels.
"""

from dataclasses import dataclass

from django.db import transaction

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import stamping
from apps.documents.models import BatesPage, Document, Production, ProductionDocument


@dataclass(frozen=True)
class Numbered:
    """What a new production writes: its volume name, stamp settings (prefix, digits, page
    suffix, positions, legend, font), first number, and its documents in order, each with the
    pages it takes."""

    volume: str
    stamp: stamping.StampSettings
    first: int
    documents: list[tuple[Document, int]]


def numbers_needed(*, page_counts: list[int], page_suffix_digits: int) -> int:
    """How many Bates numbers documents of these page counts take."""
    return len(page_counts) if page_suffix_digits else sum(page_counts)


def production_rows_write(*, case: Case, actor: User, numbered: Numbered) -> Production:
    """Write the production, its items and every Bates index row (see the module docstring).
    The caller holds the numbering lock and has checked the range is free; the database's
    unique constraint on (case, prefix, number, page suffix) is the final word."""
    stamp = numbered.stamp
    suffixed = stamp.page_suffix_digits > 0
    counts = [pages for _, pages in numbered.documents]
    last = (
        numbered.first
        + numbers_needed(page_counts=counts, page_suffix_digits=stamp.page_suffix_digits)
        - 1
    )
    with transaction.atomic():
        production = Production.objects.create(
            case=case,
            volume=numbered.volume,
            prefix=stamp.prefix,
            digits=stamp.digits,
            page_suffix_digits=stamp.page_suffix_digits,
            first_number=numbered.first,
            last_number=last,
            position=stamp.position,
            legend=stamp.legend,
            legend_position=stamp.legend_position,
            font_size=stamp.font_size,
            margin=stamp.margin,
            transform=stamping.TRANSFORM,
            page_count=sum(counts),
            created_by=actor,
        )
        number, volume_page, bates_rows, items = numbered.first, 1, [], []
        for order, (document, page_count) in enumerate(numbered.documents, start=1):
            items.append(
                ProductionDocument(
                    production=production,
                    document=document,
                    order=order,
                    first_number=number,
                    last_number=number if suffixed else number + page_count - 1,
                    page_count=page_count,
                )
            )
            for page_number in range(1, page_count + 1):
                bates_rows.append(
                    BatesPage(
                        case=case,
                        prefix=stamp.prefix,
                        number=number,
                        page_suffix=page_number if suffixed else 0,
                        production=production,
                        document=document,
                        page_number=page_number,
                        production_page=volume_page,
                    )
                )
                volume_page += 1
                if not suffixed:
                    number += 1
            if suffixed:
                number += 1
        ProductionDocument.objects.bulk_create(items)
        BatesPage.objects.bulk_create(bates_rows, batch_size=2000)
    return production
