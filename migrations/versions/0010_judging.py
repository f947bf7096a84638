"""The LLM judge made here: its revisions (stored name -> backend, model, weights, prompt version and hash,
decoding) and every answer it gave, keyed by (revision, task, text hash, question), invalid ones with their reason

Revision ID: 0010_judging
Revises: 0009_labels
Create Date: 2026-12-03 18:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0010_judging'
down_revision = '0009_labels'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'judge_revisions',
        sa.Column('name', sa.String(length=128), nullable=False),
        sa.Column('revision', sa.String(length=255), nullable=False),
        sa.Column('backend', sa.String(length=16), nullable=False),
        sa.Column('model', sa.String(length=255), nullable=False),
        sa.Column('weights', sa.String(length=255), nullable=False),
        sa.Column('prompt', sa.String(length=64), nullable=False),
        sa.Column('prompt_sha', sa.String(length=16), nullable=False),
        sa.Column('decoding', sa.String(length=32), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('name'),
        sa.UniqueConstraint('revision'),
    )
    op.create_table(
        'judge_answers',
        sa.Column('revision', sa.String(length=255), nullable=False),
        sa.Column('task', sa.String(length=16), nullable=False),
        sa.Column('text_hash', sa.String(length=64), nullable=False),
        sa.Column('question', sa.String(length=32), nullable=False),
        sa.Column('label', sa.String(length=16), nullable=True),
        sa.Column('value', sa.Float(), nullable=True),
        sa.Column('probs', sa.JSON(), nullable=True),
        sa.Column('mass', sa.Float(), nullable=True),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.Column('answer', sa.Text(), nullable=True),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('revision', 'task', 'text_hash', 'question'),
    )


def downgrade() -> None:
    op.drop_table('judge_answers')
    op.drop_table('judge_revisions')
