"""tidelog on Spark (the ``spark`` extra): the ``tidelog`` data source and maintenance jobs.

from tidelog.spark import TidelogDataSource
spark.dataSource.register(TidelogDataSource)
"""

from __future__ import annotations

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "tidelog.spark needs PySpark: pip install 'tidelog[spark]' (pyspark >= 4.2, pyarrow)"
    ) from exc

from tidelog.spark.source import TidelogDataSource

__all__ = ["TidelogDataSource"]
