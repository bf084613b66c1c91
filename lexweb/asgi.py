"""ASGI entry point: Django for HTTP, the MCP server at /mcp (apps/api/mcp.py), Channels for
websockets."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django_asgi_app = get_asgi_application()

# Imported after Django is set up: these import models.
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from apps.accounts.middleware import WebsocketAuthMiddleware  # noqa: E402
from apps.api.mcp import with_mcp  # noqa: E402
from lexweb.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": with_mcp(django_asgi_app),
        "websocket": WebsocketAuthMiddleware(URLRouter(websocket_urlpatterns)),
    }
)
