/** Input limits shared by the HTTP side and the command line. */

/**
 * The longest password (in UTF-16 code units, as JavaScript counts a string) an update may
 * carry: a longer one makes the Authorization header malformed, so the CLI refuses to set it.
 */
export const MAX_PASSWORD_LENGTH = 1024;
