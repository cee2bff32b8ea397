"""JMS -> journal (the ingest): the active driver takes messages off the JMS sources in transacted
sessions, writes them to the journal topic, and commits on JMS only after Kafka acknowledged them.
"""
