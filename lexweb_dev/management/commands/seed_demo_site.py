from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.cluster.models import Host
from lexweb_dev import demo


class Command(BaseCommand):
    help = (
        "Load the reference site as the demo cluster, its backends played by local fakes or, "
        "with LEXWEB_DEMO_BACKENDS=llamacpp, real llama.cpp servers (manage.py demo_backends). "
        "Only on an empty cluster; nothing if LEXWEB_DEMO_DATA=false."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        # A configured cluster is never overwritten by demo data.
        if not settings.LEXWEB_DEMO_DATA or Host.objects.exists():
            return
        loaded = demo.site_load_demo(
            text=demo.REFERENCE_SITE.read_text(encoding="utf-8"),
            port_base=settings.LEXWEB_DEMO_BACKEND_PORT,
        )
        played_by = (
            "real llama.cpp servers on the CPU (the Ollama one a fake)"
            if settings.LEXWEB_DEMO_BACKENDS == "llamacpp"
            else "local fakes"
        )
        self.stdout.write(
            f"Demo cluster loaded (the reference site): {loaded.boards} boards, "
            f"{loaded.backends} backends on {played_by} from port "
            f"{settings.LEXWEB_DEMO_BACKEND_PORT}."
        )
