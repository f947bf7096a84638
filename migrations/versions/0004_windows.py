"""Systems with a declared knowledge cutoff; scores note a leak risk and their citation normalisation

Revision ID: 0003_windows
Revises: 0003_citations_at
Create Date: 2026-12-01 09:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003_windows'
down_revision = '0003_citations_at'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('systems',
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('knowledge_cutoff', sa.Date(), nullable=False),
    sa.Column('model', sa.Text(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('leak_risk', sa.Boolean(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('citation_normalisation', sa.String(length=16), server_default='global',
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.drop_column('citation_normalisation')
        batch_op.drop_column('leak_risk')
    op.drop_table('systems')
