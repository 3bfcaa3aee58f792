"""Apache Paimon compaction from Python: the paimon-compact CLI, shipped inside this package.

``compact_table(uri, ...)`` runs Paimon's dedicated compaction job on one table (a local path or
an ``s3://``, ``gs://``, ``az://`` URI) and returns its report as a dict (``docs/report.md``).
``paimon_compact.ray.compact_table`` spreads one job's buckets over Ray workers and commits once
(``docs/fanout.md``). Both run the binary this wheel carries; nothing is compiled on install.
"""

from ._cli import PaimonCompactError, binary, compact_table, run_cli

__all__ = ["PaimonCompactError", "binary", "compact_table", "run_cli"]
__version__ = "0.1.0"
