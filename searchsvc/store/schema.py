"""Database tables (SQLAlchemy 2 ORM). Portable across SQLite and PostgreSQL: times are epoch
seconds, structured fields are JSON text written by :mod:`searchsvc.store.jsonutil`."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class StudyRow(Base):
    __tablename__ = "studies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    state: Mapped[str] = mapped_column(String(20), nullable=False)
    metric: Mapped[str] = mapped_column(String(200), nullable=False)
    mode: Mapped[str] = mapped_column(String(3), nullable=False)
    searcher: Mapped[str] = mapped_column(String(50), nullable=False)
    spec_text: Mapped[str] = mapped_column(Text, nullable=False)
    spec_file: Mapped[str] = mapped_column(Text, nullable=False)
    total_trials: Mapped[int | None] = mapped_column(Integer)
    results_dir: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float, nullable=False)
    started_at: Mapped[float | None] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)
    provenance: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    driver: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    owner: Mapped[str | None] = mapped_column(String(100), index=True)  # the service's user
    constraints: Mapped[str | None] = mapped_column(Text)  # JSON: the study file's bounds

    trials: Mapped[list[TrialRow]] = relationship(
        back_populates="study", cascade="all, delete-orphan", passive_deletes=True
    )


class TrialRow(Base):
    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("study_id", "number", name="uq_trial_number"),
        # Covers a study's summary (search trials and seed repeats by state, best value), which
        # every read of a study computes: answered from the index alone, without reading the
        # trials' rows (a study with constraints also reads its candidates' final metrics).
        Index("ix_trial_study_summary", "study_id", "state", "repeat_of", "best_value"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(
        ForeignKey("studies.id", ondelete="CASCADE"), nullable=False, index=True
    )
    number: Mapped[int] = mapped_column(Integer, nullable=False)
    state: Mapped[str] = mapped_column(String(20), nullable=False)
    config: Mapped[str] = mapped_column(Text, nullable=False)
    arm: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    seed: Mapped[int] = mapped_column(Integer, nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[float | None] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)
    best_value: Mapped[float | None] = mapped_column(Float)
    best_step: Mapped[int | None] = mapped_column(Integer)
    last_step: Mapped[int | None] = mapped_column(Integer)
    node: Mapped[str | None] = mapped_column(String(255))
    checkpoints: Mapped[str] = mapped_column(Text, nullable=False, default="[]")
    repeat_of: Mapped[int | None] = mapped_column(Integer)  # a seed repeat of trial number N
    final_metrics: Mapped[str | None] = mapped_column(Text)  # JSON: last finite value of each

    study: Mapped[StudyRow] = relationship(back_populates="trials")


class MeasurementRow(Base):
    __tablename__ = "measurements"
    __table_args__ = (Index("ix_measurement_trial_step", "trial_id", "attempt", "step"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(
        ForeignKey("trials.id", ondelete="CASCADE"), nullable=False
    )
    attempt: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    step: Mapped[int] = mapped_column(Integer, nullable=False)
    value: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[str] = mapped_column(Text, nullable=False)
    recorded_at: Mapped[float] = mapped_column(Float, nullable=False)
    telemetry: Mapped[str | None] = mapped_column(Text)  # JSON: the worker's measurements
    # JSON: the representation dimensionality sdk.watch measured (Measurement.dimensionality)
    dimensionality: Mapped[str | None] = mapped_column(Text)


class EventRow(Base):
    """Something a scheduler did to a trial: stopped it at a rung, or (PBT) replaced its weights
    and config with a perturbed copy of another trial's."""

    __tablename__ = "trial_events"
    __table_args__ = (Index("ix_event_study_trial", "study_id", "trial_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(
        ForeignKey("studies.id", ondelete="CASCADE"), nullable=False
    )
    trial_number: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(30), nullable=False)
    step: Mapped[int | None] = mapped_column(Integer)
    data: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    recorded_at: Mapped[float] = mapped_column(Float, nullable=False)


class TokenRow(Base):
    """An API token of the service: only its SHA-256 is kept."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(100), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[float] = mapped_column(Float, nullable=False)
    # May upload code bundles (`searchsvc tokens create --allow-code`): runs anything.
    allow_code: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False,
                                             server_default=false())
    # The highest study priority it may submit (`searchsvc tokens create --max-priority`).
    max_priority: Mapped[int] = mapped_column(Integer, nullable=False, default=0,
                                              server_default="0")


class QuotaRow(Base):
    """The most CPUs and GPUs a service user's studies may hold at once (None: no limit)."""

    __tablename__ = "quotas"

    user: Mapped[str] = mapped_column(String(100), primary_key=True)
    cpu: Mapped[float | None] = mapped_column(Float, nullable=True)
    gpu: Mapped[float | None] = mapped_column(Float, nullable=True)
