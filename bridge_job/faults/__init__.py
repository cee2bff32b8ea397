"""What a failed call means to the job, one rule for every system it talks to.

- `stops.py`: a hard failure. The bridge stops with one line that says what to fix (`BridgeStopped`), or
  stops processing at once because its lease is gone (`LeadershipLost`).
- `outages.py`: a system that does not answer. The call is asked again, the outage is logged and reported,
  and the bridge stops only once it lasts past `spec.outages.patienceSeconds`.
- `credentials.py`: a login from the environment the operator fills from a Secret; one that is missing
  is a hard failure naming the variables and the Secret.

A failure of one message (no route, a conversion that fails, a refused send) is neither: it is a soft
failure, handled by its route's policy (routing/failures.py).
"""
