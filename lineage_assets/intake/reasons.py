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
# JSON that parses but is not what the spec allows
INVALID_NUMBER = "invalid_number"  # NaN, Infinity, a number beyond a double's range or Python's int digits
DUPLICATE_KEY = "duplicate_key"  # an object names one key twice
INVALID_UNICODE = "invalid_unicode"  # a string holds a lone UTF-16 surrogate (\ud800): not text
INVALID_NAME = "invalid_name"  # a job/dataset namespace or name that is blank or holds control characters
INVALID_FACET = "invalid_facet"  # a facet a later stage reads does not have the spec's shape
# limits (`decode.LIMIT_VARIABLES`: defaults and the environment variables that override them)
RECORD_TOO_LARGE = "record_too_large"
TOO_DEEP = "too_deep"
DECOMPRESSED_TOO_LARGE = "decompressed_too_large"
NAME_TOO_LONG = "name_too_long"
# last resort: an unexpected exception while reading one record (a bug, never an expected input)
INTERNAL_ERROR = "internal_error"

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
    INVALID_NUMBER,
    DUPLICATE_KEY,
    INVALID_UNICODE,
    INVALID_NAME,
    INVALID_FACET,
    RECORD_TOO_LARGE,
    TOO_DEEP,
    DECOMPRESSED_TOO_LARGE,
    NAME_TOO_LONG,
    INTERNAL_ERROR,
)
