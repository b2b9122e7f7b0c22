"""Storage ports (object store, metadata store) and their adapters."""

from tidelog.storage.errors import (
    ConditionFailedError,
    InvalidStorageRequestError,
    ObjectExistsError,
    ObjectNotFoundError,
    StorageUnavailableError,
)
from tidelog.storage.metadata import (
    AttrAbsent,
    Check,
    Compare,
    Condition,
    Delete,
    Item,
    ItemAbsent,
    ItemExists,
    MetadataStore,
    Put,
    Write,
    all_of,
    any_of,
)
from tidelog.storage.objects import ObjectInfo, ObjectStore, put_new

__all__ = [
    "AttrAbsent",
    "Check",
    "Compare",
    "Condition",
    "ConditionFailedError",
    "Delete",
    "InvalidStorageRequestError",
    "Item",
    "ItemAbsent",
    "ItemExists",
    "MetadataStore",
    "ObjectExistsError",
    "ObjectInfo",
    "ObjectNotFoundError",
    "ObjectStore",
    "Put",
    "StorageUnavailableError",
    "Write",
    "all_of",
    "any_of",
    "put_new",
]
