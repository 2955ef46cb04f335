/**
 * Org roles, lowest first: a role may do everything a lower one may. Who may do what is an
 * authorization rule, so it lives with the principal (identity/); accounts store a user's role.
 */
export const USER_ROLES = ['MEMBER', 'ADMIN', 'OWNER'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export function roleAtLeast(role: UserRole, lowest: UserRole): boolean {
  return USER_ROLES.indexOf(role) >= USER_ROLES.indexOf(lowest);
}
