"""The tests, their stand-ins and benchmarks.

A test process started with SIGINT ignored (a background command of a script, or nohup: as CI may start
`.ci/run`) would pass that on to every `pulumi` it runs, and from it to the language hosts. The Python
host the engines build (tests/engines/versions.py: PULUMI_PYTHON_HOST) stops on SIGINT only by the
signal's default action, so the CLI, which closes each plugin with SIGINT, then waits 5 s for it before
it kills it: 5 s more for every `pulumi` command. Python's own handler here gives the children SIGINT's
default back (an exec resets a handled signal, never an ignored one).
"""

import signal
import threading

if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
