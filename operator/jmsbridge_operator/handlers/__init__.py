"""What the operator does when kopf calls it: each module glues one kind of trigger to the reconciler."""

# Registers the watch of our ConfigMaps (see its docstring for why it is not in main.py).
from jmsbridge_operator.handlers import config_maps as config_maps
