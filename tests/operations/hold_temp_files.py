"""A real process that holds upload temporaries, for the sweeper's kill tests.

`python -m tests.operations.hold_temp_files`: spools the start of an upload to disk through
Django's upload handler (as the web server does while it parses a multipart body), then copies
stdin into the blob store's receiving temporary (as `document_upload` does), and blocks there
reading until stdin closes. The test kills it with SIGKILL meanwhile, or lets it live.
"""

import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from apps.documents import storage  # noqa: E402

handler = import_string(settings.FILE_UPLOAD_HANDLERS[-1])()
handler.new_file("files", "scan.pdf", "application/pdf", None)
handler.receive_data_chunk(b"%PDF-1.7\n" + b"0" * 65536, 0)
handler.file.flush()
print("spooled", flush=True)  # noqa: T201  (the test reads it)
with storage.blob_receive(source=sys.stdin.buffer, max_bytes=1 << 40) as received:
    received.commit()
