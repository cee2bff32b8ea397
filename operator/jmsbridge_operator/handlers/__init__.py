"""What the operator does when kopf calls it: each module glues one kind of trigger to the reconciler."""
