"""IBM MQ: MQMD and its header chain, PCF, trace-route.

Shared file: each module's owner adds its own import lines below.
"""
from .constants import ENCODING_BIG, ENCODING_LITTLE  # noqa: F401
