"""PySpark adapter over mqcodec's batch decoders (issue: Spark adapter).

    from mqcodec.spark import get_session, decode_column, explode_pcf_parameters
    spark = get_session()
    df = spark.read.parquet("bodies.parquet")              # any table with a binary column "body"
    pcf = decode_column(df, "body", "pcf")                  # + struct column "pcf"
    params = explode_pcf_parameters(df, "body", keep=["msg_key"])

Kinds: ``"pcf"`` (PCF bodies), ``"mq"`` (IBM MQ messages, MQMD first),
``"msmq"`` (MSMQ binary-protocol packets); see :mod:`mqcodec.spark.udfs`
and docs/spark.md.  Importing this package does not import pyspark.
"""
from .session import ADAPTER_CONF, get_session
from .udfs import (
    DECODERS,
    Decoder,
    arrow_decoder,
    available,
    decode_arrow,
    decode_column,
    explode_children,
    explode_pcf_parameters,
    get,
    pandas_decoder,
    register,
)

__all__ = [
    "ADAPTER_CONF",
    "get_session",
    "DECODERS",
    "Decoder",
    "arrow_decoder",
    "available",
    "decode_arrow",
    "decode_column",
    "explode_children",
    "explode_pcf_parameters",
    "get",
    "pandas_decoder",
    "register",
]
