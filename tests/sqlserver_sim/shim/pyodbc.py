"""Stands in for pyodbc in a runner process started by the simulator tests (PYTHONPATH puts it first)."""
from sqlserver_sim.fake_pyodbc import *  # noqa: F401,F403
from sqlserver_sim.fake_pyodbc import Error, OperationalError, ProgrammingError, SQL_DBMS_NAME, SQL_DRIVER_NAME  # noqa: F401
