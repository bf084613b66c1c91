"""Files sent to browsers and agents (originals, production volumes, export zips), read a block
at a time under ASGI too.

Django serves a FileResponse (a sync iterator of the file's blocks) under ASGI by reading it
whole into a list first ("StreamingHttpResponse must consume synchronous iterators"): a 500 MB
volume took 500 MB of the web process for each download at once. `FileDownload` gives the
ASGI handler an async iterator that reads one block at a time on a worker thread; WSGI and the
test client read it as Django's FileResponse does.
"""

from collections.abc import AsyncIterator, Iterator
from typing import cast

from asgiref.sync import sync_to_async
from django.http import FileResponse


class FileDownload(FileResponse):
    """Django's FileResponse, read a block at a time under ASGI."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.is_async:  # an async iterator of its own: Django's way serves it as it is
            async for part in super().__aiter__():
                yield part
            return
        blocks = iter(cast(Iterator[bytes], self.streaming_content))
        read = sync_to_async(_next_block, thread_sensitive=False)
        while (block := await read(blocks)) is not None:
            yield block


def _next_block(blocks: Iterator[bytes]) -> bytes | None:
    return next(blocks, None)
