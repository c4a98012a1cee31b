"""What a data dir holds and who may write it: the Delta tables (`tables`, `delta_log`), their maintenance and
reference, the streaming checkpoints' repair, and the data dir's file locks."""

__all__ = ["checkpoint_repair", "data_dir_locks", "delta_log", "maintain", "table_reference", "tables"]
