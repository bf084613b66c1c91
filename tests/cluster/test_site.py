"""`manage.py load_site` and the site description it reads: the reference site loads exactly,
twice without change, and every wrong file is refused with nothing changed."""

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import AuditEvent
from apps.cluster.models import Backend, Board, Deployment, Gpu, GpuLink, Host, RoleRoute
from apps.cluster.services import site

pytestmark = pytest.mark.django_db

REFERENCE = Path(__file__).resolve().parents[2] / "examples" / "reference_site.yaml"


def _snapshot() -> tuple[object, ...]:
    return (
        list(Host.objects.values_list("pk", "name", "description")),
        list(Gpu.objects.values_list("pk", "host__name", "index", "memory_bytes", "board__name")),
        list(Board.objects.values_list("host__name", "name")),
        list(GpuLink.objects.values_list("a__index", "b__index", "kind", "nvlink_count")),
        list(Backend.objects.values_list("pk", "name", "base_url", "board__name", "slots")),
        list(Deployment.objects.values_list("pk", "backend__name", "model_name", "context_size")),
        list(RoleRoute.objects.values_list("role", "position", "deployment__model_name")),
    )


def _boards(host: str) -> dict[str, list[int]]:
    return {
        board.name: sorted(board.gpus.values_list("index", flat=True))
        for board in Board.objects.filter(host__name=host)
    }


def test_reference_site_loads_its_boards_backends_and_roles() -> None:
    call_command("load_site", str(REFERENCE))

    assert _boards("threadripper") == {
        "A": [4, 5, 8, 9],
        "B": [6, 7, 10, 11],
        "pair-0-1": [0, 1],
        "pair-2-3": [2, 3],
    }
    assert Gpu.objects.get(host__name="threadripper", index=3).memory_bytes == 16 * 2**30
    assert _boards("epyc") == {"ollama": [0, 1, 2, 3, 4, 5]}
    assert GpuLink.objects.filter(kind="nvlink").count() == 14
    assert dict(Backend.objects.values_list("name", "kind")) == {
        "llama-board-a": "llama_cpp",
        "llama-board-b": "llama_cpp",
        "llama-gate": "llama_cpp",
        "llama-adversary": "llama_cpp",
        "ollama-epyc": "ollama",
    }
    drafter = RoleRoute.objects.filter(role="drafter").order_by("position")
    assert [r.deployment.model_name for r in drafter] == ["qwen3.6-35b-a3b", "qwen3.5-122b-a10b"]
    reasoner = Deployment.objects.get(model_name="qwen3.5-122b-a10b")
    assert (reasoner.backend.board.name, reasoner.kv_cache_type, reasoner.flash_attention) == (
        "B",
        "q4_0",
        True,
    )
    assert AuditEvent.objects.filter(action="cluster.site_load").count() == 1


def test_loading_the_same_file_twice_changes_nothing() -> None:
    call_command("load_site", str(REFERENCE))
    first = _snapshot()

    call_command("load_site", str(REFERENCE))

    assert _snapshot() == first


SMALL = """
hosts:
  - name: h1
    gpus:
      - {index: 0, name: V100, memory_bytes: 34_359_738_368}
      - {index: 1, name: V100, memory_bytes: 34_359_738_368}
    boards:
      - {name: b, gpus: [0, 1]}
backends:
  - {name: be, kind: llama_cpp, url: "http://127.0.0.1:9", host: h1, board: b, slots: 2}
deployments:
  - {backend: be, model: m, kv_cache_type: f16, context_size: 8192, parallel_slots: 2,
     weights_bytes: 1000, n_layers: 2, n_kv_heads: 2, head_dim_k: 64, head_dim_v: 64}
roles:
  drafter: [be/m]
"""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("{index: 1, name: V100", "{index: 0, name: V100"), "GPU index 0 is listed twice"),
        (("gpus: [0, 1]}", "gpus: [0, 7]}"), "no GPU 7"),
        (("board: b, slots", "board: nope, slots"), "has no board 'nope'"),
        (("- {backend: be, model", "- {backend: other, model"), "no backend 'other'"),
        (("drafter: [be/m]", "drafter: [be/x]"), "no deployment 'be/x'"),
        (("drafter: [be/m]", "pilot: [be/m]"), "roles.pilot"),
        (("kind: llama_cpp", "kind: vllm"), "backends.0.kind"),
        (('url: "http://127.0.0.1:9"', 'url: "file:///etc/passwd"'), "backends.0.url"),
        (
            ('url: "http://127.0.0.1:9"', 'url: "http://127.0.0.1:9/v1?key=1"'),
            r"backends\.0\.url: .*takes no query string or fragment",
        ),
        (
            ('url: "http://127.0.0.1:9"', 'url: "http://127.0.0.1:9#top"'),
            r"backends\.0\.url: .*takes no query string or fragment",
        ),
        (("slots: 2}", "slots: 0}"), "backends.0.slots"),
        (
            (
                "memory_bytes: 34_359_738_368}\n      - {index: 1",
                "memory_bytes: -5}\n      - {index: 1",
            ),
            "memory_bytes",
        ),
        (("name: h1", "name: h1\n    colour: red"), "colour"),
        (("kv_cache_type: f16", "kv_cache_type: q3_k"), "kv_cache_type"),
        (("weights_bytes: 1000,", "weights_bytes: 100_000_000_000,"), "does not fit|needs"),
        (("n_layers: 2,", "n_layers: 0,"), "layers"),
    ],
)
def test_wrong_site_is_refused_and_nothing_changes(change: tuple[str, str], message: str) -> None:
    site.site_load(text=SMALL)
    before = _snapshot()
    text = SMALL.replace(*change, 1)
    assert text != SMALL

    with pytest.raises(site.SiteError, match=message):
        site.site_load(text=text.replace("model: m,", "model: m, enabled: true,"))

    assert _snapshot() == before


def test_duplicate_gpu_index_is_refused_by_the_command_with_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(SMALL.replace("{index: 1, name: V100", "{index: 0, name: V100"))

    with pytest.raises(CommandError, match=r"GPU index 0 is listed twice.*Nothing was changed"):
        call_command("load_site", str(path))

    assert not Host.objects.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must be a mapping"),
        ("- just\n- a list\n", "must be a mapping"),
        ("hosts: [\n", "not valid YAML"),
        ("a: &a [*a, *a]\n", "a: Extra inputs"),
        ("hosts: &a [*a]\n", "hosts.0: Input should be a valid dictionary"),
        # Never constructed (safe_load): no command runs.
        (
            "hosts: !!python/object/apply:os.system ['true']\n",
            "not valid YAML: could not determine",
        ),
        ("hosts:\n  - name: 'x\x00y'\n", "not valid YAML: unacceptable character"),
        ('hosts:\n  - {name: h, description: "a\\0b"}\n', "hosts.0.description"),
        (
            'backends:\n  - {name: "be\\0", kind: ollama, url: "http://x", host: h, board: b}\n',
            "backends.0.name",
        ),
        ("hosts: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
        (
            "deployments:\n  - {backend: b, model: m, kv_cache_type: f16,"
            " sampling: {temperature: .nan}}\n",
            "temperature must be a finite number",
        ),
    ],
)
def test_malformed_and_hostile_yaml_is_refused(text: str, message: str) -> None:
    with pytest.raises(site.SiteError, match=re.escape(message)):
        site.site_load(text=text)
    assert not Host.objects.exists()


def test_oversized_site_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * (site.MAX_SITE_FILE_BYTES + 1))

    with pytest.raises(CommandError, match=r"over 1,000,000 bytes"):
        call_command("load_site", str(path))


def test_missing_and_binary_files_give_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such file"):
        call_command("load_site", str(tmp_path / "nope.yaml"))
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CommandError, match="UTF-8"):
        call_command("load_site", str(binary))


def test_a_gpu_on_two_boards_and_an_nvlink_without_count_are_refused() -> None:
    two_boards = SMALL.replace(
        "      - {name: b, gpus: [0, 1]}",
        "      - {name: b, gpus: [0, 1]}\n      - {name: c, gpus: [1]}",
    )
    with pytest.raises(site.SiteError, match="GPU 1 is on boards 'b' and 'c'"):
        site.site_load(text=two_boards)
    no_count = SMALL.replace(
        "    boards:", "    links:\n      - {gpus: [0, 1], kind: nvlink}\n    boards:"
    )
    with pytest.raises(site.SiteError, match="NVLink needs a count"):
        site.site_load(text=no_count)


def test_reloading_keeps_the_backend_api_key_when_the_file_has_none() -> None:
    site.site_load(
        text=SMALL.replace("board: b, slots: 2}", 'board: b, slots: 2, api_key: "sk-1"}')
    )
    site.site_load(text=SMALL)

    assert Backend.objects.get().api_key == "sk-1"


def test_a_file_that_takes_a_gpu_from_a_board_a_deployment_needs_is_refused() -> None:
    # 40 GB of weights need both 32 GiB GPUs of board b.
    big = SMALL.replace("weights_bytes: 1000,", "weights_bytes: 40_000_000_000,")
    site.site_load(text=big)
    before = _snapshot()
    # The same host, now with GPU 1 on a board of its own; the file does not list the model.
    shrink = big.replace(
        "      - {name: b, gpus: [0, 1]}",
        "      - {name: b, gpus: [0]}\n      - {name: c, gpus: [1]}",
    )
    shrink = shrink[: shrink.index("deployments:")]

    with pytest.raises(site.SiteError, match=r"deployment 'be/m': .*needs"):
        site.site_load(text=shrink)

    assert _snapshot() == before
