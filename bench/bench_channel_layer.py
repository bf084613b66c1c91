"""Channel-layer throughput: group_send -> receive round trips through the PostgreSQL layer
(the embedded default) against Channels' in-memory layer (the peer: no I/O at all) in one run,
and against channels_redis (the scaled-out option) when a Redis answers at REDIS_URL or
127.0.0.1:6379 (null otherwise).

Prints one JSON object. Run with `make bench`.
"""

import asyncio
import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

from channels.layers import BaseChannelLayer, InMemoryChannelLayer  # noqa: E402
from django.conf import settings  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

MESSAGES = 2000
WINDOW = 50  # messages in flight at once, like a burst of progress events


async def _throughput(layer: BaseChannelLayer) -> float:
    channel = await layer.new_channel(prefix="bench.")
    await layer.group_add("bench.group", channel)
    started = time.perf_counter()
    for start in range(0, MESSAGES, WINDOW):
        batch = range(start, min(start + WINDOW, MESSAGES))
        await asyncio.gather(
            *(layer.group_send("bench.group", {"type": "bench.tick", "n": n}) for n in batch)
        )
        for _ in batch:
            await asyncio.wait_for(layer.receive(channel), 10)
    elapsed = time.perf_counter() - started
    await layer.group_discard("bench.group", channel)
    return MESSAGES / elapsed


async def _redis_throughput() -> float | None:
    from channels_redis.core import RedisChannelLayer

    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
    try:
        return await _throughput(RedisChannelLayer(hosts=[url], prefix="lexweb-bench"))
    except (OSError, TimeoutError, ConnectionError) as exc:
        print(f"redis peer skipped: {type(exc).__name__}", file=sys.stderr)
        return None


async def main() -> None:
    config = settings.CHANNEL_LAYERS["default"]
    layer = import_string(config["BACKEND"])(**config.get("CONFIG", {}))
    ours = await _throughput(layer)
    peer = await _throughput(InMemoryChannelLayer())
    redis = await _redis_throughput()
    print(
        json.dumps(
            {
                "benchmark": "channel_layer_group_send_receive",
                "messages": MESSAGES,
                "layer": config["BACKEND"],
                "messages_per_second": round(ours, 1),
                "peer": "channels.layers.InMemoryChannelLayer",
                "peer_messages_per_second": round(peer, 1),
                "ratio_to_peer": round(ours / peer, 4),
                "redis_messages_per_second": round(redis, 1) if redis else None,
                "ratio_to_redis": round(ours / redis, 4) if redis else None,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
