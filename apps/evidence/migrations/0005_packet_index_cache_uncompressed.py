"""The kept verifier index is stored as it is read (apps.verification.index_cache: not
compressed, it loads fastest), so PostgreSQL is told not to compress it either: EXTERNAL keeps
the column out of line (TOAST) without pglz, which would cost time on every write and read.
Stored indexes of the earlier, compressed format are rebuilt on first use (their format differs)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("evidence", "0004_packet_index_cache")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE evidence_packetindexcache ALTER COLUMN data SET STORAGE EXTERNAL",
            reverse_sql=(
                "ALTER TABLE evidence_packetindexcache ALTER COLUMN data SET STORAGE EXTENDED"
            ),
        ),
    ]
