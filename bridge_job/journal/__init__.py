"""The journal topic, shared by the flows: its records and epoch markers, reading ranges of it, its
transactional writer, finding or creating the topic, and dropping redelivered duplicates.
"""
