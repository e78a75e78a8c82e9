"""Reason codes for rejected lines/events. Each is distinct and documented in the README."""

NOT_JSON = "not_json"
CORRUPT_FILE = "corrupt_file"
NOT_OBJECT = "not_object"
MISSING_FIELD = "missing_field"
INVALID_FIELD = "invalid_field"
INVALID_EVENT_TIME = "invalid_event_time"
INVALID_RUN_ID = "invalid_run_id"
INVALID_EVENT_TYPE = "invalid_event_type"
AMBIGUOUS_KIND = "ambiguous_kind"
BEFORE_START_DATE = "before_start_date"
JOB_MISMATCH = "job_mismatch"

ALL = (
    NOT_JSON,
    CORRUPT_FILE,
    NOT_OBJECT,
    MISSING_FIELD,
    INVALID_FIELD,
    INVALID_EVENT_TIME,
    INVALID_RUN_ID,
    INVALID_EVENT_TYPE,
    AMBIGUOUS_KIND,
    BEFORE_START_DATE,
    JOB_MISMATCH,
)
