"""Periodic jobs that keep the job system and the file store honest. Each calls one service."""
