# cython: annotation_typing=False
include "../codec/ibmmq/conversation.py"
# The compiled twin of mqcodec.ibmmq.conversation (the CallTracker state machine):
# the same source file, compiled by Cython, so the rules are written once; the
# tracker tests run against both (tests/test_mq_calls.py).  The include comes
# first: the included module's docstring must open the module.
