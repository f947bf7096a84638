"""The verifier: a cache of its verdicts per (verifier revision, idea text hash, paper); per score the verifier that
decided and the embedding-only score beside it; per match the verifier's probabilities and the embedding decision

Revision ID: 0008_verifier
Revises: 0007_stored_evidence
Create Date: 2026-12-02 13:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0008_verifier'
down_revision = '0007_stored_evidence'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'verdicts',
        sa.Column('revision', sa.String(length=128), nullable=False),
        sa.Column('idea_hash', sa.String(length=64), nullable=False),
        sa.Column('paper_id', sa.String(length=255), nullable=False),
        sa.Column('p_direction', sa.Float(), nullable=False),
        sa.Column('p_realised', sa.Float(), nullable=False),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('revision', 'idea_hash', 'paper_id'),
    )
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('verifier', sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column('verifier_top_k', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('embedding_score', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('embedding_n_matches', sa.Integer(), nullable=True))
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('verifier_p_direction', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('verifier_p_realised', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('verifier_source', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('embedding_realised', sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column('embedding_direction', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('matches', schema=None) as batch_op:
        for name in ('embedding_direction', 'embedding_realised', 'verifier_source', 'verifier_p_realised',
                     'verifier_p_direction'):
            batch_op.drop_column(name)
    with op.batch_alter_table('scores', schema=None) as batch_op:
        for name in ('embedding_n_matches', 'embedding_score', 'verifier_top_k', 'verifier'):
            batch_op.drop_column(name)
    op.drop_table('verdicts')
