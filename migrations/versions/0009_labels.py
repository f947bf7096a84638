"""Labels: uniform random draws of a run's scored ideas (one stratum per run row, i.e. per system) and people's
labels of (idea, paper) pairs, one per annotator

Revision ID: 0009_labels
Revises: 0008_verifier
Create Date: 2026-12-03 17:45:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0009_labels'
down_revision = '0008_verifier'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'label_draws',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('seed', sa.Integer(), nullable=False),
        sa.Column('population', sa.Integer(), nullable=False),
        sa.Column('available', sa.Integer(), nullable=False),
        sa.Column('n', sa.Integer(), nullable=False),
        sa.Column('inclusion_probability', sa.Float(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_label_draws_run_id', 'label_draws', ['run_id'])
    op.create_table(
        'label_draw_ideas',
        sa.Column('draw_id', sa.Integer(), nullable=False),
        sa.Column('idea_pk', sa.Integer(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['draw_id'], ['label_draws.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['idea_pk'], ['ideas.pk'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('draw_id', 'idea_pk'),
        sa.UniqueConstraint('idea_pk', name='uq_label_draw_ideas_idea_pk'),
    )
    op.create_table(
        'labels',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('idea_pk', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.String(length=255), nullable=False),
        sa.Column('annotator', sa.String(length=128), nullable=False),
        sa.Column('label', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['idea_pk'], ['ideas.pk'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('idea_pk', 'paper_id', 'annotator', name='uq_labels_idea_paper_annotator'),
    )
    op.create_index('ix_labels_idea_pk', 'labels', ['idea_pk'])


def downgrade() -> None:
    op.drop_index('ix_labels_idea_pk', table_name='labels')
    op.drop_table('labels')
    op.drop_table('label_draw_ideas')
    op.drop_index('ix_label_draws_run_id', table_name='label_draws')
    op.drop_table('label_draws')
