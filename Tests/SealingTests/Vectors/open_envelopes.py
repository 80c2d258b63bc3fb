"""Opens envelopes with open_envelope.py (the independent opener, unchanged) for a test process that
would otherwise start Python once per envelope: each input line is "KEY_HEX ENVELOPE", each output
line "ok PLAINTEXT_HEX" or "rejected REASON", until the input ends."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from open_envelope import Rejected, open_envelope  # noqa: E402

for line in sys.stdin:
    key_hex, envelope = line.split()
    try:
        answer = "ok " + open_envelope(bytes.fromhex(key_hex), envelope).hex()
    except Rejected as e:
        answer = "rejected " + " ".join(str(e).split())
    print(answer, flush=True)
