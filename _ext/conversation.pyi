# Stub of the Cython module conversation.pyx: mqcodec.ibmmq.conversation compiled
# (the same source), so the same names.
from mqcodec.ibmmq.conversation import *  # noqa: F401,F403
from mqcodec.ibmmq.conversation import __all__ as __all__
