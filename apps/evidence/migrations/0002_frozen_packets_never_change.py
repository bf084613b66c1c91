"""A frozen packet never changes, enforced by PostgreSQL as well as by the services.

- evidence_frozenpage: no UPDATE; no DELETE either, except inside a transaction that has said
  `SET LOCAL lexweb.snapshot_maintenance = 'on'` (the freeze benchmark removes its own packets
  that way; nothing in the product does).
- evidence_packet: a frozen row is never updated (nor made editable again).
- evidence_packetitem: no item is inserted into, updated in or deleted from a frozen packet.

TRUNCATE (the test suite's flush) fires no row triggers.
"""

from django.db import migrations

FORWARD = r"""
CREATE FUNCTION evidence_snapshot_never_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND coalesce(current_setting('lexweb.snapshot_maintenance', true), '') = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'A frozen packet''s pages never change (% refused on packet %).',
        TG_OP, OLD.packet_id
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER evidence_frozenpage_never_changes
    BEFORE UPDATE OR DELETE ON evidence_frozenpage
    FOR EACH ROW EXECUTE FUNCTION evidence_snapshot_never_changes();

CREATE FUNCTION evidence_frozen_packet_never_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'frozen' THEN
        IF TG_OP = 'DELETE'
           AND coalesce(current_setting('lexweb.snapshot_maintenance', true), '') = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'Packet % is frozen and never changes; make a new version.', OLD.id
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER evidence_packet_frozen_never_changes
    BEFORE UPDATE OR DELETE ON evidence_packet
    FOR EACH ROW EXECUTE FUNCTION evidence_frozen_packet_never_changes();

CREATE FUNCTION evidence_no_item_change_in_frozen_packet() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    target bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        target := OLD.packet_id;
    ELSE
        target := NEW.packet_id;
    END IF;
    IF EXISTS (SELECT 1 FROM evidence_packet WHERE id = target AND status = 'frozen')
       OR (TG_OP = 'UPDATE' AND EXISTS (
            SELECT 1 FROM evidence_packet WHERE id = OLD.packet_id AND status = 'frozen')) THEN
        IF TG_OP = 'DELETE'
           AND coalesce(current_setting('lexweb.snapshot_maintenance', true), '') = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'Packet % is frozen: its items never change; make a new version.',
            target USING ERRCODE = 'restrict_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER evidence_packetitem_frozen_packet
    BEFORE INSERT OR UPDATE OR DELETE ON evidence_packetitem
    FOR EACH ROW EXECUTE FUNCTION evidence_no_item_change_in_frozen_packet();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS evidence_packetitem_frozen_packet ON evidence_packetitem;
DROP FUNCTION IF EXISTS evidence_no_item_change_in_frozen_packet();
DROP TRIGGER IF EXISTS evidence_packet_frozen_never_changes ON evidence_packet;
DROP FUNCTION IF EXISTS evidence_frozen_packet_never_changes();
DROP TRIGGER IF EXISTS evidence_frozenpage_never_changes ON evidence_frozenpage;
DROP FUNCTION IF EXISTS evidence_snapshot_never_changes();
"""


class Migration(migrations.Migration):
    dependencies = [("evidence", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
