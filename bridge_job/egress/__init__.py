"""Journal -> Kafka (the egress): Spark plans journal ranges; each task reads its range, drops
redeliveries, routes, converts and writes the records to their topics.
"""
