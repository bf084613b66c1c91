"""Issue 29, requirement 3: every JSON schema the product sends fits the max_tokens of the call
that sends it, in the worst case (apps.cluster.backends.grammar.worst_case_tokens: every string
at its maxLength, every list at its maxItems, no whitespace: the llama.cpp client's grammar
has none). A string or list left unbounded raises SchemaError here; a bound raised past the
budget fails the comparison."""

import pytest
from django.conf import settings
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.cluster.backends.grammar import worst_case_tokens
from apps.drafting.models import Stage
from apps.drafting.pipeline import execute, outputs
from apps.verification import second_opinion

N = Stage.Name


@pytest.mark.parametrize("name", sorted(execute.MODEL_STAGES))
def test_each_structured_stage_worst_reply_fits_its_max_tokens(name: str) -> None:
    schema = outputs.schema_for(name)
    if schema is None:
        assert name not in (N.GATE, N.ADVERSARY, N.EXTRACTOR)  # free text: issue 29 req. 2
        return

    assert worst_case_tokens(schema) <= execute.MAX_TOKENS[name]


def test_second_opinion_worst_reply_fits_its_max_tokens() -> None:
    worst = worst_case_tokens(second_opinion.SCHEMA)

    assert worst <= settings.LEXWEB_SECOND_OPINION_MAX_TOKENS
    assert second_opinion.SCHEMA["properties"]["reason"]["maxLength"] == (  # type: ignore[index]
        second_opinion.MAX_REASON
    )


def test_extractor_lists_no_more_than_fit_whatever_the_setting(settings: SettingsWrapper) -> None:
    settings.LEXWEB_RUN_MAX_TRANSACTIONS = 10_000
    assert worst_case_tokens(outputs.extractor_schema()) <= execute.MAX_TOKENS[N.EXTRACTOR]
    settings.LEXWEB_RUN_MAX_TRANSACTIONS = 2

    assert outputs.extractor_schema()["properties"]["transactions"]["maxItems"] == 2  # type: ignore[index]
    assert outputs.transactions_limit() == 2
