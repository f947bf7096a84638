"""Prior art: per score the look-back window searched before its cutoff and the idea's class at realised and at
direction level; per score its top K papers in that window with the matcher's decisions

Revision ID: 0011_prior_art
Revises: 0010_judging
Create Date: 2026-12-05 08:45:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0011_prior_art'
down_revision = '0010_judging'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'prior_art',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('score_id', sa.Integer(), nullable=False),
        sa.Column('lookback_days', sa.Integer(), nullable=False),
        sa.Column('requested_start', sa.Date(), nullable=False),
        sa.Column('start', sa.Date(), nullable=True),
        sa.Column('end', sa.Date(), nullable=False),
        sa.Column('clipped', sa.Boolean(), nullable=False),
        sa.Column('papers', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('knowledge_cutoff', sa.Date(), nullable=True),
        sa.Column('class_realised', sa.String(length=20), nullable=False),
        sa.Column('class_direction', sa.String(length=20), nullable=False),
        sa.Column('realised_before', sa.Boolean(), nullable=True),
        sa.Column('direction_before', sa.Boolean(), nullable=True),
        sa.Column('n_realised', sa.Integer(), nullable=True),
        sa.Column('n_direction', sa.Integer(), nullable=True),
        sa.Column('n_realised_before_knowledge', sa.Integer(), nullable=True),
        sa.Column('n_realised_after_knowledge', sa.Integer(), nullable=True),
        sa.Column('verifier', sa.String(length=128), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['score_id'], ['scores.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('score_id'),
    )
    op.create_table(
        'prior_art_matches',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('prior_art_id', sa.Integer(), nullable=False),
        sa.Column('rank', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.String(length=255), nullable=False),
        sa.Column('title', sa.Text(), nullable=False),
        sa.Column('venue', sa.String(length=255), nullable=True),
        sa.Column('year', sa.Integer(), nullable=False),
        sa.Column('publication_date', sa.Date(), nullable=False),
        sa.Column('citations', sa.Integer(), nullable=True),
        sa.Column('similarity', sa.Float(), nullable=False),
        sa.Column('realised', sa.Boolean(), nullable=False),
        sa.Column('direction', sa.Boolean(), nullable=False),
        sa.Column('period', sa.String(length=24), nullable=True),
        sa.Column('p_realised', sa.Float(), nullable=True),
        sa.Column('p_direction', sa.Float(), nullable=True),
        sa.Column('p_method', sa.Float(), nullable=True),
        sa.Column('evidence_sentence', sa.Text(), nullable=True),
        sa.Column('problem_sentence', sa.Text(), nullable=True),
        sa.Column('shared_terms', sa.JSON(), nullable=True),
        sa.Column('verifier_p_direction', sa.Float(), nullable=True),
        sa.Column('verifier_p_realised', sa.Float(), nullable=True),
        sa.Column('verifier_source', sa.String(length=16), nullable=True),
        sa.Column('embedding_realised', sa.Boolean(), nullable=True),
        sa.Column('embedding_direction', sa.Boolean(), nullable=True),
        sa.ForeignKeyConstraint(['prior_art_id'], ['prior_art.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('prior_art_matches', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_prior_art_matches_prior_art_id'), ['prior_art_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('prior_art_matches', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_prior_art_matches_prior_art_id'))
    op.drop_table('prior_art_matches')
    op.drop_table('prior_art')
