"""The audit log refuses UPDATE and DELETE at the database, whoever the client is.

TRUNCATE is not covered: it needs table ownership, and the test runner uses it to reset tables.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION accounts_auditevent_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'The audit log is append-only (% refused).', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER accounts_auditevent_append_only
    BEFORE UPDATE OR DELETE ON accounts_auditevent
    FOR EACH ROW EXECUTE FUNCTION accounts_auditevent_refuse_change();
"""

BACKWARD = """
DROP TRIGGER accounts_auditevent_append_only ON accounts_auditevent;
DROP FUNCTION accounts_auditevent_refuse_change();
"""


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
