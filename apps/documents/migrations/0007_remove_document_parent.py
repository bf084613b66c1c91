# The parent links are Derivation rows now (0006); the column goes.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0006_parent_links_become_derivations"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="document",
            name="parent",
        ),
    ]
