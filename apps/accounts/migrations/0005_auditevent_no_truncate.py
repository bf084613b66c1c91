"""The audit log refuses TRUNCATE too (0003 refuses UPDATE and DELETE, row by row; TRUNCATE
fires no row triggers and needs only ownership, which the application's role has).

A statement trigger refuses it whoever runs it, the table's owner included. One way through:
the session setting `lexweb.audit_truncate` = 'allowed', which the application never sets.
The test suite sets it on its own test database (tests/conftest.py), because the runner resets
every table between transactional tests with one TRUNCATE. Like the row triggers, this stops
the application's code and careless SQL, not a hostile owner of the table (who could drop the
trigger): for that, run the application as a role that does not own its tables.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION accounts_auditevent_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('lexweb.audit_truncate', true), '') = 'allowed' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'The audit log is append-only (TRUNCATE refused).'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER accounts_auditevent_no_truncate
    BEFORE TRUNCATE ON accounts_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION accounts_auditevent_refuse_truncate();
"""

BACKWARD = """
DROP TRIGGER accounts_auditevent_no_truncate ON accounts_auditevent;
DROP FUNCTION accounts_auditevent_refuse_truncate();
"""


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_throttle_bucket")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
