export { Injectable } from '@nestjs/common';
