"""Issue "Cluster", requirement 3: a deployment's memory from its GGUF facts plus KV cache plus
a margin; a deployment that does not fit its board (with the board's other deployments), or
whose board has no GPUs or spans hosts, is refused where the admin sees it, and nothing changes.

The reference site (DESIGN.md): Threadripper with 12 V100-SXM2, board A = {4,5,8,9},
board B = {6,7,10,11}, pair {0,1}, pair {2,3} with one 16 GB card.

On "does Qwen3.5-122B-A10B at Q8 fit a 4 x 32 GB board?": 122.11e9 parameters at Q8_0
(34 bytes per 32) are 129.7e9 bytes = 120.8 GiB, and four V100 32 GB hold 4 x 32 GiB =
128 GiB = 137.4e9 bytes. "130 GB > 128 GB" compares decimal gigabytes with binary ones; it fits,
as DESIGN.md says it runs there.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts.models import AuditEvent
from apps.cluster.models import Backend, Board, Deployment, Gpu, GpuStatus, Host
from apps.cluster.services import placement
from apps.cluster.services.placement import GIB, MIB, PlacementError
from tests.cluster.test_gguf import Spec, write_gguf

pytestmark = pytest.mark.django_db


@dataclass
class Site:
    host: Host
    boards: dict[str, Board]
    backends: dict[str, Backend]


@pytest.fixture
def site() -> Site:
    host = Host.objects.create(name="threadripper")
    boards = {
        name: Board.objects.create(host=host, name=name)
        for name in ["A", "B", "pair-0-1", "pair-2-3", "empty"]
    }
    board_of = {4: "A", 5: "A", 8: "A", 9: "A", 6: "B", 7: "B", 10: "B", 11: "B"}
    board_of |= {0: "pair-0-1", 1: "pair-0-1", 2: "pair-2-3", 3: "pair-2-3"}
    for index in range(12):
        memory = 16 if index == 3 else 32
        Gpu.objects.create(
            host=host,
            index=index,
            name=f"Tesla V100-SXM2-{memory}GB",
            memory_bytes=memory * GIB,
            board=boards[board_of[index]],
        )
    backends = {
        name: Backend.objects.create(
            name=f"llama-{name}",
            kind=Backend.Kind.LLAMA_CPP,
            base_url=f"http://threadripper.lan:{8081 + n}",
            board=board,
        )
        for n, (name, board) in enumerate(boards.items())
    }
    return Site(host=host, boards=boards, backends=backends)


def qwen_122b(backend: Backend, **changes: Any) -> Deployment:
    """Qwen3.5-122B-A10B as Q8_0 GGUF, KV cache q4_0, flash attention (DESIGN.md). 48 layers,
    12 of them full attention (the rest Gated DeltaNet keep no KV cache), 2 KV heads of 256."""
    facts: dict[str, Any] = {
        "backend": backend,
        "model_name": "qwen3.5-122b-a10b",
        "architecture": "qwen35moe",
        "total_params": 122_110_000_000,
        "active_params": 10_000_000_000,
        "quantization": "Q8_0",
        "file_size_bytes": 129_750_000_000,
        "weights_bytes": 122_110_000_000 * 34 // 32,
        "n_layers": 12,
        "n_kv_heads": 2,
        "head_dim_k": 256,
        "head_dim_v": 256,
        "context_size": 131_072,
        "parallel_slots": 2,
        "kv_cache_type": Deployment.KvCacheType.Q4_0,
        "flash_attention": True,
    }
    return Deployment(**(facts | changes))


def qwen_35b(backend: Backend, **changes: Any) -> Deployment:
    facts: dict[str, Any] = {
        "backend": backend,
        "model_name": "qwen3.6-35b-a3b",
        "architecture": "qwen35moe",
        "total_params": 35_000_000_000,
        "active_params": 3_000_000_000,
        "quantization": "Q8_0",
        "file_size_bytes": 37_200_000_000,
        "weights_bytes": 37_190_000_000,
        "n_layers": 48,
        "n_kv_heads": 4,
        "head_dim_k": 128,
        "head_dim_v": 128,
        "context_size": 131_072,
        "parallel_slots": 2,
        "kv_cache_type": Deployment.KvCacheType.Q4_0,
        "flash_attention": True,
    }
    return Deployment(**(facts | changes))


# --- Arithmetic ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cache_type", "expected"),
    [
        # 48 layers x 65,536 cells x 8 KV heads x (128 + 128) x bytes per element
        ("f32", 48 * 65_536 * 8 * 256 * 4),
        ("f16", 48 * 65_536 * 8 * 256 * 2),  # 12 GiB
        ("bf16", 48 * 65_536 * 8 * 256 * 2),
        ("q8_0", 48 * 65_536 * 8 * 256 * 34 // 32),
        ("q5_1", 48 * 65_536 * 8 * 256 * 24 // 32),
        ("q5_0", 48 * 65_536 * 8 * 256 * 22 // 32),
        ("q4_1", 48 * 65_536 * 8 * 256 * 20 // 32),
        ("q4_0", 48 * 65_536 * 8 * 256 * 18 // 32),  # 3.375 GiB
        ("iq4_nl", 48 * 65_536 * 8 * 256 * 18 // 32),
    ],
)
def test_kv_cache_is_layers_cells_heads_head_sizes_and_bytes_of_the_cache_type(
    cache_type: str, expected: int
) -> None:
    size = placement.kv_cache_bytes(
        n_layers=48,
        cells=65_536,
        n_kv_heads=8,
        head_dim_k=128,
        head_dim_v=128,
        kv_cache_type=cache_type,
    )

    assert size == expected
    assert (
        placement.kv_cache_bytes(
            n_layers=48,
            cells=65_536,
            n_kv_heads=8,
            head_dim_k=128,
            head_dim_v=128,
            kv_cache_type="f16",
        )
        == 12 * GIB
    )


def test_keys_and_values_may_have_different_head_sizes() -> None:
    size = placement.kv_cache_bytes(
        n_layers=2, cells=1000, n_kv_heads=4, head_dim_k=192, head_dim_v=128, kv_cache_type="f16"
    )

    assert size == 2 * 1000 * 4 * (192 + 128) * 2


def test_llama_server_context_is_the_total_and_ollama_context_is_per_request() -> None:
    # llama-server --ctx-size 131072 --parallel 4: four slots of 32,768 share 131,072 cells.
    assert placement.kv_cells(backend_kind="llama_cpp", context_size=131_072, parallel_slots=4) == (
        131_072
    )
    # Ollama num_ctx 32768 with 4 parallel requests keeps 4 contexts of 32,768.
    assert placement.kv_cells(backend_kind="ollama", context_size=32_768, parallel_slots=4) == (
        131_072
    )


def test_margin_is_half_a_gib_per_gpu_plus_one_gib() -> None:
    estimate = placement.deployment_memory_estimate(
        weights_bytes=10 * GIB,
        n_layers=1,
        n_kv_heads=1,
        head_dim_k=32,
        head_dim_v=32,
        cells=1024,
        kv_cache_type="f16",
        n_gpus=4,
    )

    assert estimate.margin_bytes == 4 * 512 * MIB + GIB == 3 * GIB
    assert estimate.kv_cache_bytes == 1024 * 64 * 2
    assert estimate.total_bytes == 13 * GIB + 1024 * 64 * 2


# --- Fits, does not fit ----------------------------------------------------------------------


def test_qwen_122b_q8_fits_a_four_v100_board_as_design_says(site: Site) -> None:
    estimate = placement.placement_check(deployment=qwen_122b(site.backends["B"]))

    assert estimate.weights_bytes == 129_741_875_000  # 120.8 GiB
    assert estimate.kv_cache_bytes == 12 * 131_072 * 2 * 512 * 18 // 32  # 0.84 GiB
    assert estimate.margin_bytes == 3 * GIB
    assert f"{estimate.total_bytes / GIB:.1f}" == "124.7"
    assert estimate.total_bytes < 4 * 32 * GIB


def test_qwen_122b_does_not_fit_the_mixed_pair_and_the_message_shows_the_arithmetic(
    site: Site,
) -> None:
    with pytest.raises(PlacementError) as refused:
        placement.placement_check(deployment=qwen_122b(site.backends["pair-2-3"]))

    # 2 GPUs: margin 2 x 0.5 + 1 = 2 GiB.
    assert refused.value.message.startswith(
        "qwen3.5-122b-a10b needs 123.7 GiB (weights 120.8 GiB + KV cache 0.8 GiB + margin "
        "2.0 GiB); board pair-2-3 on threadripper (2 GPUs) has 48.0 GiB."
    )
    assert refused.value.field is None


def test_a_long_f16_context_does_not_fit_where_a_q8_cache_does(site: Site) -> None:
    # A dense 32B at Q8_0 on the 64 GiB pair: 64 layers, 8 KV heads of 128, 131,072 cells.
    dense = qwen_122b(
        site.backends["pair-0-1"],
        model_name="dense-32b",
        weights_bytes=34_800_000_000,  # 32.4 GiB
        n_layers=64,
        n_kv_heads=8,
        head_dim_k=128,
        head_dim_v=128,
        kv_cache_type="f16",
        flash_attention=False,
    )
    # f16: 64 x 131,072 x 8 x 256 x 2 = 32 GiB; 32.4 + 32 + 2 = 66.4 GiB > 64 GiB.
    with pytest.raises(PlacementError, match=r"needs 66\.4 GiB .* has 64\.0 GiB"):
        placement.placement_check(deployment=dense)

    dense.kv_cache_type = "q8_0"
    dense.flash_attention = True
    # q8_0: 17 GiB; 32.4 + 17 + 2 = 51.4 GiB.
    assert f"{placement.placement_check(deployment=dense).total_bytes / GIB:.1f}" == "51.4"


def test_the_other_deployments_on_the_board_are_counted(site: Site) -> None:
    drafter = placement.deployment_save(deployment=qwen_35b(site.backends["A"]))
    second_backend = Backend.objects.create(
        name="llama-A-second", kind="llama_cpp", base_url="http://h:9000", board=site.boards["A"]
    )

    with pytest.raises(PlacementError) as refused:
        placement.placement_check(deployment=qwen_122b(second_backend))

    assert "needs 124.7 GiB" in refused.value.message
    assert (
        "has 128.0 GiB, of which 41.0 GiB are already taken by the other deployments on that "
        "board (qwen3.6-35b-a3b 41.0 GiB)"
    ) in refused.value.message
    # Disabled, the drafter is not resident and no longer counts.
    drafter.enabled = False
    drafter.save()
    placement.placement_check(deployment=qwen_122b(second_backend))


def test_a_deployment_is_not_counted_twice_when_it_is_edited(site: Site) -> None:
    saved = placement.deployment_save(deployment=qwen_122b(site.backends["B"]))

    saved.context_size = 65_536
    placement.deployment_save(deployment=saved)

    saved.refresh_from_db()
    assert saved.context_size == 65_536


def test_a_disabled_deployment_must_still_fit_an_empty_board(site: Site) -> None:
    with pytest.raises(PlacementError, match=r"has 48\.0 GiB"):
        placement.placement_check(deployment=qwen_122b(site.backends["pair-2-3"], enabled=False))


def test_a_board_without_gpus_is_refused(site: Site) -> None:
    with pytest.raises(PlacementError, match="Board threadripper / empty has no GPUs") as refused:
        placement.placement_check(deployment=qwen_35b(site.backends["empty"]))

    assert refused.value.field == "backend"


def test_a_board_with_a_gpu_of_another_host_is_refused(site: Site) -> None:
    epyc = Host.objects.create(name="epyc")
    Gpu.objects.create(
        host=epyc, index=0, name="RTX 3090", memory_bytes=24 * GIB, board=site.boards["A"]
    )

    with pytest.raises(PlacementError, match="spans hosts: epyc GPU 0") as refused:
        placement.placement_check(deployment=qwen_35b(site.backends["A"]))

    assert refused.value.field == "backend"


def test_missing_facts_are_refused_rather_than_estimated_as_zero(site: Site) -> None:
    blank = qwen_35b(site.backends["A"], weights_bytes=0, file_size_bytes=0, n_kv_heads=0)

    with pytest.raises(PlacementError, match=r"missing: weights size .*, KV heads"):
        placement.placement_check(deployment=blank)


def test_the_file_size_stands_in_for_unknown_weights(site: Site) -> None:
    estimate = placement.placement_check(deployment=qwen_35b(site.backends["A"], weights_bytes=0))

    assert estimate.weights_bytes == 37_200_000_000


def test_a_quantised_cache_without_flash_attention_is_refused(site: Site) -> None:
    with pytest.raises(PlacementError, match="q4_0 KV cache needs flash attention") as refused:
        placement.placement_check(deployment=qwen_35b(site.backends["A"], flash_attention=False))

    assert refused.value.field == "kv_cache_type"


def test_save_stores_the_estimate_and_a_refusal_saves_nothing(site: Site) -> None:
    saved = placement.deployment_save(deployment=qwen_122b(site.backends["B"]))
    assert saved.memory_estimate_bytes == placement.placement_check(deployment=saved).total_bytes
    assert AuditEvent.objects.filter(action="cluster.deployment_create").count() == 1

    with pytest.raises(PlacementError):
        placement.deployment_save(deployment=qwen_122b(site.backends["pair-2-3"]))

    assert Deployment.objects.count() == 1
    assert AuditEvent.objects.filter(action__startswith="cluster.deployment").count() == 1


# --- Estimate beside NVML --------------------------------------------------------------------


def _sample(gpu: Gpu, used_gib: float) -> None:
    GpuStatus.objects.create(
        gpu=gpu,
        sampled_at=timezone.now(),
        memory_used_bytes=int(used_gib * GIB),
        memory_total_bytes=gpu.memory_bytes - 256 * MIB,
    )


def test_summary_shows_the_estimate_beside_what_nvml_measures(site: Site) -> None:
    saved = placement.deployment_save(deployment=qwen_122b(site.backends["B"]))
    for gpu in Gpu.objects.filter(board=site.boards["B"]):
        _sample(gpu, 30.5)

    memory = placement.board_memory(site.boards["B"])
    summary = placement.placement_summary(saved)

    assert (memory.gpus, memory.total_bytes) == (4, 128 * GIB)
    assert memory.measured_used_bytes == 4 * int(30.5 * GIB)
    assert summary == (
        "Estimate 124.7 GiB (weights 120.8 GiB + KV cache 0.8 GiB + margin 3.0 GiB) · "
        "board B: 4 GPUs, 128.0 GiB · NVML measured 122.0 GiB used of 127.0 GiB"
    )


def test_a_board_not_fully_measured_shows_no_measurement(site: Site) -> None:
    saved = placement.deployment_save(deployment=qwen_122b(site.backends["B"]))
    _sample(Gpu.objects.filter(board=site.boards["B"])[0], 30)

    assert placement.board_memory(site.boards["B"]).measured_used_bytes is None
    assert placement.placement_summary(saved).endswith("NVML: no measurement of every GPU yet")
    assert placement.placement_summary(None) == "Shown once the deployment is saved."


# --- The admin form --------------------------------------------------------------------------


def _form(deployment: Deployment, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        field: getattr(deployment, field)
        for field in [
            "model_name",
            "architecture",
            "total_params",
            "active_params",
            "quantization",
            "file_size_bytes",
            "weights_bytes",
            "n_layers",
            "n_kv_heads",
            "head_dim_k",
            "head_dim_v",
            "context_size",
            "kv_cache_type",
            "parallel_slots",
        ]
    }
    data |= {
        "backend": deployment.backend_id,
        "enabled": "on" if deployment.enabled else "",
        "flash_attention": "on" if deployment.flash_attention else "",
        "gguf_path": "",
        "sampling": "{}",
        "routes-TOTAL_FORMS": "0",
        "routes-INITIAL_FORMS": "0",
        "routes-MIN_NUM_FORMS": "0",
        "routes-MAX_NUM_FORMS": "1000",
    }
    data |= changes
    return {key: value for key, value in data.items() if value is not None}


ADD = "/admin/cluster/deployment/add/"


def test_admin_refuses_a_deployment_that_does_not_fit_and_saves_nothing(
    admin_client_: Client, site: Site
) -> None:
    response = admin_client_.post(ADD, _form(qwen_122b(site.backends["pair-2-3"])))

    assert response.status_code == 200
    errors = response.context["adminform"].form.non_field_errors()
    assert "needs 123.7 GiB" in errors[0] and "has 48.0 GiB" in errors[0]
    assert b"needs 123.7 GiB" in response.content
    assert not Deployment.objects.exists()


def test_admin_saves_a_deployment_that_fits_with_its_estimate(
    admin_client_: Client, site: Site
) -> None:
    response = admin_client_.post(ADD, _form(qwen_122b(site.backends["B"])))

    assert response.status_code == 302
    saved = Deployment.objects.get()
    assert f"{saved.memory_estimate_bytes / GIB:.1f}" == "124.7"


def test_admin_change_that_no_longer_fits_leaves_the_configuration_unchanged(
    admin_client_: Client, site: Site
) -> None:
    saved = placement.deployment_save(deployment=qwen_122b(site.backends["B"]))
    before = Deployment.objects.values().get()

    # f16 cache at 1M cells: 12 x 1,048,576 x 2 x 512 x 2 = 24 GiB more.
    response = admin_client_.post(
        f"/admin/cluster/deployment/{saved.pk}/change/",
        _form(saved, context_size=1_048_576, kv_cache_type="f16"),
    )

    assert response.status_code == 200
    assert "needs 147.8 GiB" in response.context["adminform"].form.non_field_errors()[0]
    assert Deployment.objects.values().get() == before


def test_admin_board_problem_is_shown_on_the_backend_field(
    admin_client_: Client, site: Site
) -> None:
    response = admin_client_.post(ADD, _form(qwen_35b(site.backends["empty"])))

    assert response.status_code == 200
    assert "has no GPUs" in response.context["adminform"].form.errors["backend"][0]
    assert not Deployment.objects.exists()


def test_admin_fills_facts_left_at_zero_from_the_gguf_header(
    admin_client_: Client, site: Site, tmp_path: Path
) -> None:
    path = tmp_path / "moe.gguf"
    write_gguf(path, Spec(arch="qwen3moe", experts=8, experts_used=2, layers=2))
    blank: dict[str, object] = dict.fromkeys(
        ["total_params", "active_params", "weights_bytes", "n_layers"], 0
    )
    blank |= {"file_size_bytes": "", "n_kv_heads": "", "head_dim_k": 0, "head_dim_v": 0}
    typed_in = qwen_35b(site.backends["A"], model_name="tiny-moe", architecture="", quantization="")

    response = admin_client_.post(ADD, _form(typed_in, gguf_path=str(path), **blank))

    assert response.status_code == 302, response.context["adminform"].form.errors
    saved = Deployment.objects.get()
    assert (saved.architecture, saved.quantization) == ("qwen3moe", "Q8_0")
    assert (saved.n_layers, saved.n_kv_heads, saved.head_dim_k) == (2, 2, 16)
    assert saved.file_size_bytes == path.stat().st_size
    assert 0 < saved.active_params < saved.total_params
    assert saved.memory_estimate_bytes > 0


def test_admin_keeps_facts_the_admin_typed_over_the_header(
    admin_client_: Client, site: Site, tmp_path: Path
) -> None:
    path = tmp_path / "dense.gguf"
    write_gguf(path)

    response = admin_client_.post(
        ADD, _form(qwen_35b(site.backends["A"], weights_bytes=0), gguf_path=str(path))
    )

    assert response.status_code == 302
    saved = Deployment.objects.get()
    assert (saved.n_layers, saved.n_kv_heads, saved.architecture) == (48, 4, "qwen35moe")
    assert saved.weights_bytes < 1_000_000  # from the tiny header


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"not a model at all", "not a GGUF file"), (b"GGUF\x03\x00\x00\x00", "truncated")],
)
def test_admin_shows_a_bad_gguf_file_on_its_field_and_saves_nothing(
    admin_client_: Client, site: Site, tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)

    response = admin_client_.post(ADD, _form(qwen_35b(site.backends["A"]), gguf_path=str(path)))

    assert response.status_code == 200
    assert message in response.context["adminform"].form.errors["gguf_path"][0]
    assert not Deployment.objects.exists()
