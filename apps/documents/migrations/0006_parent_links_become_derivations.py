# Lineage replaces the single parent link: every e-mail attachment's link to its message becomes
# a Derivation row (transform "email-attachment", version "1", deterministic). The column itself
# is dropped by 0007: PostgreSQL refuses to alter a table in the transaction that has just
# written rows whose foreign keys point at it ("pending trigger events").

import django.db.models.deletion
from django.db import migrations, models

BATCH = 2000


def parent_links_to_derivations(apps, schema_editor):
    Document = apps.get_model("documents", "Document")
    Derivation = apps.get_model("documents", "Derivation")
    links = (
        Document.objects.filter(parent__isnull=False)
        .order_by("pk")
        .values_list("pk", "parent_id", "created_at")
    )
    rows = [
        Derivation(
            child_id=child,
            parent_id=parent,
            transform="email-attachment",
            version="1",
            deterministic=True,
            parameters={},
            order=0,
            created_at=created_at,
        )
        for child, parent, created_at in links.iterator(chunk_size=BATCH)
    ]
    Derivation.objects.bulk_create(rows, batch_size=BATCH, ignore_conflicts=True)


def derivations_to_parent_links(apps, schema_editor):
    Document = apps.get_model("documents", "Document")
    Derivation = apps.get_model("documents", "Derivation")
    attachments = Derivation.objects.filter(transform="email-attachment").order_by("child", "id")
    seen = set()
    for child, parent in attachments.values_list("child_id", "parent_id").iterator():
        if child not in seen:  # a single link holds one message: the first one
            seen.add(child)
            Document.objects.filter(pk=child).update(parent_id=parent)
    attachments.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0005_origins_provenance_derivation"),
    ]

    operations = [
        migrations.AddField(
            model_name="production",
            name="volume_document",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="volume_of",
                to="documents.document",
            ),
        ),
        migrations.RunPython(parent_links_to_derivations, derivations_to_parent_links),
    ]
