"""How a shared cluster is divided between studies: dominant-resource fairness between users,
then between each user's studies, over whole trial slots (pure: no Ray, no store)."""

from searchsvc.allocation.drf import (
    Claim,
    Policy,
    accrue,
    allocate,
    dominant_share,
    jain_index,
    preempted,
)

__all__ = ["Claim", "Policy", "accrue", "allocate", "dominant_share", "jain_index",
           "preempted"]
