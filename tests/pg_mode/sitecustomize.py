# Subprocesses of a PostgreSQL test run (see electa.testing.pg_mode): open stores on PostgreSQL.
import os

if os.environ.get("ELECTA_TEST_PG_DSN"):
    from electa.testing.pg_mode import ENV_DSN, install

    install(os.environ[ENV_DSN])
