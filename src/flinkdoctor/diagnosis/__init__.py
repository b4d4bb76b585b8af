"""Diagnosis (driver, findings only): findings from the events table, their correlation into root causes and
chains, the fallback when no signature names a cause, and the WARN/ERROR lines no rule explains."""
