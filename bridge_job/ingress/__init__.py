"""Kafka -> JMS (the ingress): Spark plans ranges of the kafkaToJms routes' topics; each task converts
its records into JMS messages and sends them, replies to JMS requesters included.
"""
